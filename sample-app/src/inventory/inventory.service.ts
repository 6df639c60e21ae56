import { ConflictException, Injectable, NotFoundException } from '@nestjs/common';
import { LockContext, WithLock } from 'nestjs-redis-lock';
import { Database } from '../database/database.js';

export interface Item {
  readonly sku: string;
  readonly stock: number;
  readonly sold: number;
}

/**
 * Limited stock: purchases take the item's lock inside a transaction, and the stock update is
 * fenced with the lock's token, so even a holder that lost its lock (paused past its lease) cannot
 * write. The CHECK (stock >= 0) constraint is the last line: it never fires.
 */
@Injectable()
export class InventoryService {
  constructor(private readonly db: Database) {}

  async stockItem(sku: string, stock: number): Promise<Item> {
    await this.db.transaction(async () => {
      await this.db.query(`DELETE FROM purchases WHERE sku = $1`, [sku]);
      await this.db.query(`INSERT INTO items (sku, stock) VALUES ($1, $2) ON CONFLICT (sku) DO UPDATE SET stock = EXCLUDED.stock`, [
        sku,
        stock,
      ]);
    });
    return this.get(sku);
  }

  async get(sku: string): Promise<Item> {
    const { rows } = await this.db.query<{ sku: string; stock: number; sold: string | number }>(
      `SELECT i.sku, i.stock, (SELECT count(*) FROM purchases p WHERE p.sku = i.sku) AS sold FROM items i WHERE i.sku = $1`,
      [sku],
    );
    if (!rows[0]) throw new NotFoundException(`Item ${sku} does not exist`);
    return { sku: rows[0].sku, stock: Number(rows[0].stock), sold: Number(rows[0].sold) };
  }

  purchase(sku: string, buyer: string): Promise<Item> {
    return this.db.transaction(() => this.purchaseUnderLock(sku, buyer));
  }

  /**
   * Takes one unit for a paid order; idempotent (the order id is the buyer), since a delayed job may
   * be delivered twice. 409 when sold out, 404 for an item the inventory does not track.
   */
  reserveForOrder(sku: string, orderId: string): Promise<Item> {
    return this.db.transaction(() => this.reserveUnderLock(sku, orderId));
  }

  @WithLock('item:<0>', { waitTimeout: 10_000 })
  async reserveUnderLock(sku: string, orderId: string): Promise<Item> {
    const { rows } = await this.db.query(`SELECT 1 FROM purchases WHERE sku = $1 AND buyer = $2`, [sku, orderId]);
    if (rows.length > 0) return this.get(sku);
    return this.purchaseUnderLock(sku, orderId);
  }

  @WithLock('item:<0>', { waitTimeout: 10_000 })
  async purchaseUnderLock(sku: string, buyer: string): Promise<Item> {
    const { fencingToken } = LockContext.current()!;
    const { rowCount } = await this.db.query(`UPDATE items SET stock = stock - 1, fence = $2 WHERE sku = $1 AND stock > 0 AND fence < $2`, [
      sku,
      fencingToken,
    ]);
    if (rowCount === 0) {
      await this.get(sku); // 404 if it does not exist
      throw new ConflictException(`Item ${sku} is sold out`);
    }
    await this.db.query(`INSERT INTO purchases (sku, buyer, fence) VALUES ($1, $2, $3)`, [sku, buyer, fencingToken]);
    return this.get(sku);
  }
}
