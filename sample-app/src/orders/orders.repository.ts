import { Injectable } from '@nestjs/common';
import { Database } from '../database/database.js';
import { toOrder, type Order, type OrderRow } from './order.js';

/** SQL for orders. Every state change is fenced: it only applies with a newer fencing token. */
@Injectable()
export class OrdersRepository {
  constructor(private readonly db: Database) {}

  async insert(id: string, item: string, expiresInMs: number): Promise<void> {
    await this.db.query(
      `INSERT INTO orders (id, item, status, expires_at) VALUES ($1, $2, 'pending', now() + $3 * interval '1 millisecond')`,
      [id, item, expiresInMs],
    );
  }

  async find(id: string): Promise<Order | undefined> {
    const { rows } = await this.db.query<OrderRow>(
      `SELECT o.*, (SELECT count(*) FROM payments p WHERE p.order_id = o.id) AS payments FROM orders o WHERE o.id = $1`,
      [id],
    );
    return rows[0] ? toOrder(rows[0]) : undefined;
  }

  /** Marks a pending order paid and records the payment; false if it was not pending or the token is stale. */
  async markPaid(id: string, fencingToken: string): Promise<boolean> {
    const { rowCount } = await this.db.query(
      `UPDATE orders SET status = 'paid', paid_at = now(), fence = $2
        WHERE id = $1 AND status = 'pending' AND fence < $2`,
      [id, fencingToken],
    );
    if (rowCount === 0) return false;
    await this.db.query(`INSERT INTO payments (order_id) VALUES ($1)`, [id]);
    return true;
  }

  /** Marks a pending order expired; false if it was paid (or expired) already or the token is stale. */
  async markExpired(id: string, fencingToken: string): Promise<boolean> {
    const { rowCount } = await this.db.query(
      `UPDATE orders SET status = 'expired', expired_at = now(), fence = $2
        WHERE id = $1 AND status = 'pending' AND fence < $2`,
      [id, fencingToken],
    );
    return rowCount > 0;
  }
}
