/**
 * Appends `entry` to the list kept under `key` on a decorated method (`descriptor.value`): a method
 * may carry the same decorator several times (several topics, several events), each adding one entry.
 */
export function appendMethodMetadata(key: string, entry: object, descriptor: PropertyDescriptor): void {
  const method = descriptor.value as object;
  const existing = (Reflect.getMetadata(key, method) as object[] | undefined) ?? [];
  Reflect.defineMetadata(key, [...existing, entry], method);
}
