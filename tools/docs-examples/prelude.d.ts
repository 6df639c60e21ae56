// What the ```ts blocks of README.md and docs/*.md assume without declaring it: the services of the
// module under their usual names, and the application's own objects the examples talk to. A block
// that uses a name of the package or of Nest without importing it gets the import a reader would add
// (tools/docs-examples/docs-examples.ts); a fragment of statements runs as the body of an async method
// of `ExampleThis`, a fragment of class members inside a class extending `ExampleBase`. Keep it small:
// a name goes here only if several blocks assume it, or a block would read worse declaring it.
import type { DelayQueueService, LockHandle, LockService, LeaderElections, RedisLockEvents } from '../../lib/index.js';
import type { TestRedis } from '../../lib/testing/index.js';

declare global {
  /** An order, a tenant, …: the application's own records. */
  interface Order {
    id: string;
    total: number;
    fence?: string;
  }
  interface Tenant {
    id: string;
    name: string;
  }
  interface Mail {
    to: string;
    subject: string;
    body?: string;
  }
  /** One of the application's own services: any method, any arguments. */
  type AppService = { [method: string]: (...args: any[]) => Promise<any> };
  /** The application's repositories and clients an example writes to. */
  interface ExampleServices {
    locks: LockService;
    jobs: DelayQueueService;
    delayQueue: DelayQueueService;
    queue: DelayQueueService;
    elections: LeaderElections;
    events: RedisLockEvents;
    orders: {
      markCaptured(id: string, fence: string): Promise<void>;
      markRefunded(id: string, fence: string): Promise<void>;
      [method: string]: (...args: any[]) => Promise<any>;
    };
    repository: { save(...args: any[]): Promise<unknown>; [method: string]: (...args: any[]) => Promise<any> };
    db: any;
    mailer: { send(mail: Mail, options?: { signal?: AbortSignal }): Promise<void> };
    reports: AppService;
    invoices: AppService;
  }
  interface ExampleThis extends ExampleServices {}
  class ExampleBase {
    protected readonly locks: LockService;
    protected readonly jobs: DelayQueueService;
    protected readonly delayQueue: DelayQueueService;
    protected readonly orders: ExampleServices['orders'];
    protected readonly repository: ExampleServices['repository'];
    protected readonly db: any;
    protected readonly mailer: ExampleServices['mailer'];
    protected readonly reports: AppService;
    protected readonly invoices: AppService;
  }
  /** The application's orders table, as the lock examples use it (`OrdersRepository`, injected). */
  class OrdersRepository {
    markCaptured(orderId: string, fencingToken: string): Promise<void>;
    markRefunded(orderId: string, fencingToken: string): Promise<void>;
    expireIfUnpaid(orderId: string, fencingToken: string, signal?: AbortSignal): Promise<void>;
  }
  const locks: LockService;
  const jobs: DelayQueueService;
  const delayQueue: DelayQueueService;
  const queue: DelayQueueService;
  const db: any;
  /** The test's Redis (docs/testing.md: `startTestRedis()` in `beforeAll`). */
  const redis: TestRedis;
  const id: string;
  const orderId: string;
  const userId: string;
  const reportId: string;
  const invoiceId: string;
  const tenant: Tenant;
  const order: Order;
  const pages: string[];
  const from: string;
  const to: string;
  /** Work done under a lock. */
  function work(lock: LockHandle): Promise<void>;
  function transfer(from: string, to: string, fencingTokens?: Readonly<Record<string, string>>): Promise<void>;
  function upload(...args: unknown[]): Promise<void>;
}
