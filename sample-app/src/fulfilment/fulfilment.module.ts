import { Module } from '@nestjs/common';
import { InventoryModule } from '../inventory/inventory.module.js';
import { FulfilmentService } from './fulfilment.service.js';

@Module({ imports: [InventoryModule], providers: [FulfilmentService] })
export class FulfilmentModule {}
