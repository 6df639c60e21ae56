import { Body, Controller, Get, HttpCode, Param, Post } from '@nestjs/common';
import type { Order } from './order.js';
import { OrdersService } from './orders.service.js';

@Controller('orders')
export class OrdersController {
  constructor(private readonly orders: OrdersService) {}

  @Post()
  create(@Body() body: { item?: string }): Promise<Order> {
    return this.orders.create(body?.item ?? 'book');
  }

  @Get(':id')
  get(@Param('id') id: string): Promise<Order> {
    return this.orders.get(id);
  }

  /** 200 with the paid order for exactly one caller; 409 for the others (already paid, or lock busy). */
  @Post(':id/pay')
  @HttpCode(200)
  pay(@Param('id') id: string): Promise<Order> {
    return this.orders.pay(id);
  }
}
