import { Module } from '@nestjs/common';
import { InventoryModule } from '../inventory/inventory.module';
import { FulfilmentService } from './fulfilment.service';

@Module({ imports: [InventoryModule], providers: [FulfilmentService] })
export class FulfilmentModule {}
