import { Body, Controller, Get, HttpCode, Param, Post, Put } from '@nestjs/common';
import { InventoryService, type Item } from './inventory.service.js';

@Controller('items')
export class InventoryController {
  constructor(private readonly inventory: InventoryService) {}

  @Put(':sku')
  stock(@Param('sku') sku: string, @Body() body: { stock?: number }): Promise<Item> {
    return this.inventory.stockItem(sku, Number(body?.stock ?? 0));
  }

  @Get(':sku')
  get(@Param('sku') sku: string): Promise<Item> {
    return this.inventory.get(sku);
  }

  /** 200 while stock lasts, 409 once sold out. */
  @Post(':sku/purchase')
  @HttpCode(200)
  purchase(@Param('sku') sku: string, @Body() body: { buyer?: string }): Promise<Item> {
    return this.inventory.purchase(sku, body?.buyer ?? 'anonymous');
  }
}
