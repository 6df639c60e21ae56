import { Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { OnDelayedMetadata } from './interfaces/on-delayed-metadata.interface.js';
import { ON_DELAYED_METADATA } from './jobs/delay-queue.constants.js';

/** The one place that reads `@OnDelayed` metadata. */
@Injectable()
export class DelayedHandlerMetadataAccessor {
  constructor(private readonly reflector: Reflector) {}

  getDelayedHandlers(method: unknown): readonly OnDelayedMetadata[] {
    if (typeof method !== 'function') return [];
    return this.reflector.get<OnDelayedMetadata[] | undefined>(ON_DELAYED_METADATA, method) ?? [];
  }
}
