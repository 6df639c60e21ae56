import { Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { OnDelayedMetadata } from './interfaces/on-delayed-metadata.interface.js';
import type { OnJobEventMetadata } from './interfaces/on-job-event-metadata.interface.js';
import { ON_DELAYED_METADATA, ON_JOB_EVENT_METADATA } from './jobs/delay-queue.constants.js';

/** The one place that reads the delay queue's method metadata: `@OnDelayed` and `@OnJobEvent`. */
@Injectable()
export class DelayedHandlerMetadataAccessor {
  constructor(private readonly reflector: Reflector) {}

  getDelayedHandlers(method: unknown): readonly OnDelayedMetadata[] {
    if (typeof method !== 'function') return [];
    return this.reflector.get<OnDelayedMetadata[] | undefined>(ON_DELAYED_METADATA, method) ?? [];
  }

  getJobEventListeners(method: unknown): readonly OnJobEventMetadata[] {
    if (typeof method !== 'function') return [];
    return this.reflector.get<OnJobEventMetadata[] | undefined>(ON_JOB_EVENT_METADATA, method) ?? [];
  }
}
