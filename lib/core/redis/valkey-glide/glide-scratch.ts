import type { ScannedKeys, ScratchConnection } from '../redis-transport.js';
import { toRedisLockError } from '../redis-errors.js';
import { toReplyError } from './glide-errors.js';
import { InflightGate, runAdmitted } from './glide-inflight-gate.js';
import { cutClient, inflightLimitOf } from './glide-internals.js';
import type { GlideCommandClient } from './glide-package.js';
import { glidePackage } from './glide-package.js';
import { toResp2Reply } from './glide-replies.js';
import { scanKeysOn } from './glide-scan.js';

/** How long a command GLIDE refuses for its in-flight limit is tried again. */
const SCRATCH_ADMISSION_MS = 3_000;

/**
 * A short-lived GLIDE client of its own (see `ModuleTransport.openScratch`), created now. A
 * command fails after the request timeout it was built with (a few seconds) rather than waiting
 * for a server that is gone; GLIDE keeps reconnecting in the background until it is closed (it
 * has no switch for that), which a scratch connection closed after its work never notices.
 */
export class GlideScratch implements ScratchConnection {
  private readonly client: Promise<GlideCommandClient>;
  /** A caller may fire many commands at once (the testing kit removes keys in bulk). */
  private gate: InflightGate | undefined;

  constructor(
    create: () => Promise<GlideCommandClient>,
    private readonly isCluster: boolean,
  ) {
    this.client = create();
    this.client.catch(() => undefined); // reported by the first call
  }

  async scanKeys(pattern: string, maxKeys: number, maxCalls?: number): Promise<ScannedKeys> {
    try {
      return await scanKeysOn(await this.client, this.isCluster, pattern, maxKeys, maxCalls);
    } catch (error) {
      throw toRedisLockError(toReplyError(error), `scan for ${pattern}`);
    }
  }

  async command<T = unknown>(name: string, ...args: Array<string | number>): Promise<T> {
    try {
      const client = await this.client;
      const gate = (this.gate ??= new InflightGate(inflightLimitOf(client)));
      const command = [name, ...args.map(String)];
      const send = () => client.customCommand(command, { decoder: glidePackage().Decoder.String });
      return toResp2Reply(name, await runAdmitted(gate, send, performance.now() + SCRATCH_ADMISSION_MS)) as T;
    } catch (error) {
      throw toRedisLockError(toReplyError(error), `run ${name}`);
    }
  }

  async close(): Promise<void> {
    const client = await this.client.catch(() => undefined);
    if (client) cutClient(client);
  }
}
