import { startLocalRedisServer, type LocalRedisServer } from '../../lib/testing/local-redis-server.js';
import { callDashboard, startDashboardApp, type DashboardTestApp } from '../fixtures/dashboard-app.js';

/**
 * With its Redis unreachable, the dashboard answers 503 with the error's code and a generic
 * message: the Redis host and port are for the server's log, not for HTTP clients.
 */
describe('the dashboard while its Redis is down', () => {
  let server: LocalRedisServer;
  let t: DashboardTestApp;

  beforeAll(async () => {
    server = await startLocalRedisServer();
    t = await startDashboardApp({}, { redisUrl: server.url, handlers: false });
    await server.stop();
  });
  afterAll(() => t.close());

  it('answers 503 without the Redis address', async () => {
    const answer = await callDashboard(t.base, 'GET', '/_locks/api/topics');
    expect(answer.status).toBe(503);
    expect(answer.body).toEqual({
      statusCode: 503,
      error: 'Service Unavailable',
      code: 'REDIS_CONNECTION',
      message: 'The dashboard cannot reach its Redis server right now. Retry later.',
    });
    expect(JSON.stringify(answer.body)).not.toContain(String(server.port));
  });
});
