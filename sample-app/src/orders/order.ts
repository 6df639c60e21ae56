/** An order as the API returns it. */
export interface Order {
  readonly id: string;
  readonly item: string;
  readonly status: 'pending' | 'paid' | 'expired';
  readonly createdAt: string;
  readonly expiresAt: string;
  readonly paidAt: string | null;
  readonly expiredAt: string | null;
  /** Fencing token of the lock holder that last changed the order. */
  readonly fence: string;
  /** Payments recorded for the order: never more than one. */
  readonly payments: number;
}

export interface OrderRow {
  id: string;
  item: string;
  status: Order['status'];
  created_at: Date;
  expires_at: Date;
  paid_at: Date | null;
  expired_at: Date | null;
  fence: string | number;
  payments: string | number;
}

export function toOrder(row: OrderRow): Order {
  const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);
  return {
    id: row.id,
    item: row.item,
    status: row.status,
    createdAt: iso(row.created_at)!,
    expiresAt: iso(row.expires_at)!,
    paidAt: iso(row.paid_at),
    expiredAt: iso(row.expired_at),
    fence: String(row.fence),
    payments: Number(row.payments),
  };
}
