import { EventEmitter } from 'node:events';
import { Injectable } from '@nestjs/common';
import type { LockLostError } from '../errors/lock-lost.error';

/** Payloads of the events emitted by `RedisLockEvents`. */
export interface RedisLockEventMap {
  /** A held lock's lease was lost; its handle's signal has been aborted with `error`. */
  'lock.lost': [event: { key: string; fencingToken: string; error: LockLostError }];
}

/**
 * Typed event stream of the module. Inject it and subscribe; emitting costs nothing when no one listens.
 *
 * @example
 * constructor(events: RedisLockEvents) {
 *   events.on('lock.lost', ({ key, error }) => this.logger.error(`lost ${key}: ${error.message}`));
 * }
 */
@Injectable()
export class RedisLockEvents extends EventEmitter<RedisLockEventMap> {}
