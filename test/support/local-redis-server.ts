// The harness lives in tools/ so the sample app, the demo and the benchmarks start Redis the same way.
export * from '../../tools/local-redis-server.js';
