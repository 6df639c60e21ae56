import { Module } from '@nestjs/common';
import { InventoryModule } from '../inventory/inventory.module.js';
import { FulfilmentService } from './fulfilment.service.js';
import { FulfilmentsRepository } from './fulfilments.repository.js';

@Module({ imports: [InventoryModule], providers: [FulfilmentService, FulfilmentsRepository] })
export class FulfilmentModule {}
