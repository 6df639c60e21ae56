import { Module } from '@nestjs/common';
import { InventoryModule } from '../inventory/inventory.module.js';
import { FulfilmentStepsRepository } from './fulfilment-steps.repository.js';
import { FulfilmentController } from './fulfilment.controller.js';
import { FulfilmentService } from './fulfilment.service.js';

@Module({ imports: [InventoryModule], controllers: [FulfilmentController], providers: [FulfilmentService, FulfilmentStepsRepository] })
export class FulfilmentModule {}
