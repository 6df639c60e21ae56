import { OutboxUnavailableError, RedisLockError } from '../../../lib/index.js';
import { pgAddress } from '../../../lib/outbox/postgres/relay-connection.js';

describe('OutboxUnavailableError', () => {
  it('names the outbox, the address, the cause and what to check, with a stable code', () => {
    const cause = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    const error = new OutboxUnavailableError('PostgresJobOutbox, table redis_lock_job_outbox', '127.0.0.1:5432', 'pg Pool', cause);
    expect(error).toBeInstanceOf(RedisLockError);
    expect(error.name).toBe('OutboxUnavailableError');
    expect(error.code).toBe('OUTBOX_UNAVAILABLE');
    expect(error.cause).toBe(cause);
    expect(error.message).toBe(
      'The transactional outbox (PostgresJobOutbox, table redis_lock_job_outbox) cannot reach its database at 127.0.0.1:5432 ' +
        'through its relay connection (pg Pool): connect ECONNREFUSED 127.0.0.1:5432. Check that PostgreSQL is running and ' +
        'accepts connections at 127.0.0.1:5432, and the host, port, user, password and database of the connection given to ' +
        'the outbox. The application was not started: no lock, leadership or job was taken.',
    );
  });

  it('reads the errors of an AggregateError (a host name with several addresses), whose own message is empty', () => {
    const cause = new AggregateError([new Error('connect ECONNREFUSED ::1:5432'), new Error('connect ECONNREFUSED 127.0.0.1:5432')], '');
    expect(new OutboxUnavailableError('PostgresJobOutbox', 'localhost:5432', 'pg Pool', cause).message).toContain(
      '(pg Pool): connect ECONNREFUSED ::1:5432; connect ECONNREFUSED 127.0.0.1:5432. Check',
    );
  });
});

describe('pgAddress: where a pg connection looks for the database', () => {
  it.each<[string, Record<string, unknown>, string]>([
    ['host and port', { host: 'db.internal', port: 6432 }, 'db.internal:6432'],
    ['a connection string, without its credentials', { connectionString: 'postgres://app:secret@db.example:5433/app' }, 'db.example:5433'],
    ['a connection string without a port', { connectionString: 'postgresql://app@db.example/app' }, 'db.example:5432'],
    ['an IPv6 host', { host: '::1', port: 5432 }, '[::1]:5432'],
    ['a socket directory', { host: '/var/run/postgresql', port: 5432 }, '/var/run/postgresql/.s.PGSQL.5432'],
  ])('%s', (_what, options, address) => {
    expect(pgAddress(options)).toBe(address);
  });

  it("uses pg's defaults (PGHOST, PGPORT, else localhost:5432)", () => {
    const saved = { host: process.env.PGHOST, port: process.env.PGPORT };
    try {
      delete process.env.PGHOST;
      delete process.env.PGPORT;
      expect(pgAddress({})).toBe('localhost:5432');
      process.env.PGHOST = 'pg.local';
      process.env.PGPORT = '7000';
      expect(pgAddress(undefined)).toBe('pg.local:7000');
    } finally {
      for (const [name, value] of [
        ['PGHOST', saved.host],
        ['PGPORT', saved.port],
      ] as const) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  });
});
