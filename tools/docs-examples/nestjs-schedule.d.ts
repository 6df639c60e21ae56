// The part of `@nestjs/schedule` the examples use (it is not a dependency of this repository): the
// decorators' signatures as that package declares them.
declare module '@nestjs/schedule' {
  export function Cron(
    cronTime: string | Date,
    options?: { name?: string; timeZone?: string; waitForCompletion?: boolean },
  ): MethodDecorator;
  export function Interval(timeout: number): MethodDecorator;
  export function Interval(name: string, timeout: number): MethodDecorator;
}
