import { Controller, Injectable, Param, Post } from '@nestjs/common';
import { LockService, RedisLockModule, WithLock } from '../../lib/index.js';
import { deferred } from '../support/timing.js';
import { testRedisUrl, uniquePrefix } from '../support/test-app.js';
import { useHttpApp } from '../support/use-http-app.js';
import { readThrough } from '../support/use-resource.js';

/** The easy mistake: one key template locked as exclusive in one place and read/write in another. */
@Injectable()
class DocsService {
  @WithLock('doc:<0>', { waitTimeout: 1_000 })
  async edit(id: string, inside?: () => Promise<unknown>): Promise<string> {
    await inside?.();
    return `edited ${id}`;
  }

  @WithLock('doc:<0>', { mode: 'write', waitTimeout: 1_000 })
  async rewrite(id: string, inside?: () => Promise<unknown>): Promise<string> {
    await inside?.();
    return `rewritten ${id}`;
  }

  @WithLock('doc:<0>', { mode: 'read', waitTimeout: 1_000 })
  async view(id: string): Promise<string> {
    return `viewed ${id}`;
  }
}

@Controller('docs')
class DocsController {
  @Post(':id/rewrite')
  @WithLock('doc:<0>', { mode: 'write', waitTimeout: 0 })
  rewrite(@Param('id') id: string) {
    return { id };
  }
}

const kindConflict = (key: string) => ({ name: 'LockKindConflictError', code: 'LOCK_KIND_CONFLICT', key });

describe('@WithLock with an exclusive and a read/write lock on one key', () => {
  const http = useHttpApp(() => ({
    imports: [RedisLockModule.forRoot({ redis: testRedisUrl(), keyPrefix: uniquePrefix('wlk') })],
    controllers: [DocsController],
    providers: [DocsService],
  }));
  const docs = readThrough<DocsService>('the HTTP app', () => http.app.get(DocsService));
  const locks = readThrough<LockService>('the HTTP app', () => http.app.get(LockService));

  it('refuses the write section while another call holds the exclusive one, and the reverse', async () => {
    const exclusiveInside = deferred();
    const editStarted = deferred();
    const editing = docs.edit('1', () => (editStarted.resolve(), exclusiveInside.promise));
    await editStarted.promise;
    await expect(docs.rewrite('1')).rejects.toMatchObject(kindConflict('doc:1'));
    await expect(docs.view('1')).rejects.toMatchObject(kindConflict('doc:1'));
    exclusiveInside.resolve();
    await expect(editing).resolves.toBe('edited 1');

    const writeInside = deferred();
    const rewriteStarted = deferred();
    const rewriting = docs.rewrite('2', () => (rewriteStarted.resolve(), writeInside.promise));
    await rewriteStarted.promise;
    await expect(docs.edit('2')).rejects.toMatchObject(kindConflict('doc:2'));
    writeInside.resolve();
    await expect(rewriting).resolves.toBe('rewritten 2');
    expect(await locks.isLocked('doc:1')).toBe(false);
    expect(await locks.isLocked('doc:2')).toBe(false);
  });

  it('refuses a nested section of the other kind on the same key', async () => {
    await expect(docs.edit('3', () => docs.rewrite('3'))).rejects.toMatchObject(kindConflict('doc:3'));
    await expect(docs.rewrite('4', () => docs.edit('4'))).rejects.toMatchObject(kindConflict('doc:4'));
    expect(await locks.isLocked('doc:3')).toBe(false);
    expect(await locks.isLocked('doc:4')).toBe(false);
  });

  it('answers 409 Conflict with LOCK_KIND_CONFLICT over HTTP', async () => {
    const exclusive = await locks.acquire('doc:5');
    try {
      const response = await fetch(`${http.baseUrl}/docs/5/rewrite`, { method: 'POST' });
      expect(response.status).toBe(409);
      expect(await response.json()).toMatchObject({ statusCode: 409, code: 'LOCK_KIND_CONFLICT' });
    } finally {
      await exclusive.release();
    }
    const response = await fetch(`${http.baseUrl}/docs/5/rewrite`, { method: 'POST' });
    expect(response.status).toBe(201);
  });
});
