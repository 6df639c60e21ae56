/** Known limits of the dependency ecosystem that an app of the lane runs into (see docs/compatibility.md). */

/** typeorm 0.3 (and 1.x) declares `peerOptional ioredis@^5`: npm refuses it beside ioredis 6. */
export const TYPEORM_WITH_IOREDIS_6 =
  'nestjs-redis-lock/transaction/typeorm-transactional: typeorm declares peerOptional ioredis@^5, so npm refuses ' +
  ('typeorm beside ioredis 6 (ERESOLVE) without overrides or --legacy-peer-deps; it is checked in nest11-cjs ' +
    '(typeorm 0.3) and nest12-typeorm1 (typeorm 1.x), both with ioredis 5');
