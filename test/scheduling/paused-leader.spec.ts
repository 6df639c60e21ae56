import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { LeaderElection, OnOneInstance, type LockHandle } from '../../lib/index.js';
import { pauseHolderPastLease } from '../support/pause-holder-past-lease.js';
import { uniquePrefix } from '../support/test-app.js';
import { waitFor } from '../support/timing.js';
import { AwaitsElection } from './support/awaits-election.js';
import { closeSchedulingApps, createSchedulingApp } from './support/scheduling-app.js';

const LEASE_MS = 1_000;

@Injectable()
@LeaderElection('paused.leader', { ttl: LEASE_MS })
class NextLeader extends AwaitsElection {}

@Injectable()
class NextRunner {
  @OnOneInstance({ key: 'paused.once', ttl: LEASE_MS })
  async work(): Promise<'ran'> {
    return 'ran';
  }
}

/**
 * A leader, or an `@OnOneInstance` run, paused (SIGSTOP) past its lease while another instance takes
 * over: when it runs again, its first timer turn must already see its leadership (its run's lock)
 * lost, although its timers that were due before the lease's end run first after the pause
 * (issue 23, defect 5).
 */
describe('an instance paused past its lease sees its leadership or run lost the moment it runs again', () => {
  let apps: TestingModule[] = [];

  afterEach(async () => {
    await closeSchedulingApps(apps);
    apps = [];
  });

  /** Starts the paused-holder fixture in `kind`, pauses it past its lease, lets `takeOver` run, resumes it: what its first turn saw. */
  async function pausedWhile(kind: string, keyPrefix: string, takeOver: () => Promise<void>): Promise<Record<string, unknown>> {
    return (await pauseHolderPastLease(kind, keyPrefix, LEASE_MS, takeOver)).seen;
  }

  it(
    '@LeaderElection: the paused leader’s isLeader()/status() say it does not lead, its lock is not ' +
      'held and its signal aborted on its first turn, after another was elected',
    async () => {
      const keyPrefix = uniquePrefix('paused-leader');
      let next: LockHandle | undefined;
      const seen = await pausedWhile('leader', keyPrefix, async () => {
        apps.push(await createSchedulingApp(keyPrefix, [NextLeader]));
        next = await apps[0].get(NextLeader).elected.promise;
      });
      expect(seen).toMatchObject({
        isLeader: false,
        statusLeader: false,
        held: false,
        signalAborted: true,
        freshSignalAborted: true,
        throwsIfAborted: true,
      });
      expect(next!.held).toBe(true);
    },
  );

  it('@OnOneInstance: the paused run’s LockContext signal is aborted on its first turn, after another instance ran', async () => {
    const keyPrefix = uniquePrefix('paused-once');
    const seen = await pausedWhile('one-instance', keyPrefix, async () => {
      apps.push(await createSchedulingApp(keyPrefix, [NextRunner]));
      const runner = apps[0].get(NextRunner);
      await waitFor(async () => (await runner.work()) === 'ran', 30_000, 'a run on the other instance', { every: 100 });
    });
    expect(seen).toMatchObject({ signalAborted: true, contextAborted: true, throwsIfAborted: true });
  });
});
