import type { ConsumerOptions } from './consumer.interface.js';
import type { OnDelayedRepeat } from './repeat-options.interface.js';

/** What `@OnDelayed` records on a method (under `ON_DELAYED_METADATA`). Internal. */
export interface OnDelayedMetadata {
  readonly topic: string;
  readonly options?: ConsumerOptions & { readonly repeat?: OnDelayedRepeat };
}
