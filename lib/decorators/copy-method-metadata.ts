/**
 * Copies every reflect-metadata entry of `from` onto `to`, so decorators applied before a wrapping
 * decorator (route paths, Swagger operations, `SetMetadata`) stay visible on the wrapper.
 */
export function copyMethodMetadata(from: object, to: object): void {
  for (const key of Reflect.getOwnMetadataKeys(from)) {
    Reflect.defineMetadata(key, Reflect.getOwnMetadata(key, from), to);
  }
}
