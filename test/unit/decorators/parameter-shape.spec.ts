import 'reflect-metadata';
import { InvalidLockKeyTemplateError } from '../../../lib/core/errors/invalid-lock-key-template.error.js';
import { compileKeySource, parameterShape, type ParameterShape } from '../../../lib/decorators/key-template.js';

/** Records the method's design metadata (as any decorator does when the compiler emits it). */
const Recorded: MethodDecorator = () => undefined;

class Methods {
  @Recorded
  plain(id: string, order: { id: string }) {}

  @Recorded
  withDefault(id: string, page = 1) {}

  @Recorded
  rest(...ids: string[]) {}

  @Recorded
  none() {}
}

const shapeOf = (name: keyof Methods): ParameterShape =>
  parameterShape(Methods.prototype, name, Methods.prototype[name] as (...args: unknown[]) => unknown);

/** Compiles `template` for a method of the given shape, as @WithLock does at decoration time. */
const check = (template: string, shape: ParameterShape) => () =>
  compileKeySource<unknown[]>(template, {
    root: 'argument',
    location: '@WithLock on Methods.method()',
    shape,
    rootOf: (args, placeholder) => ({ value: args[placeholder.index!], name: `argument ${placeholder.index}` }),
    callFn: (fn, args) => fn(...args),
  });

describe("parameterShape: what is known of a method's parameters without its source", () => {
  it('is exact when every parameter is required', () => {
    expect(shapeOf('plain')).toEqual({ types: [String, Object], exact: true });
    expect(shapeOf('none')).toEqual({ types: [], exact: true });
  });

  it('is not exact when a default or a rest parameter may take more arguments', () => {
    expect(shapeOf('withDefault').exact).toBe(false);
    expect(shapeOf('rest')).toEqual({ types: [String], exact: false });
  });

  it('knows nothing without design metadata', () => {
    class Bare {
      method(a: string) {}
    }
    expect(parameterShape(Bare.prototype, 'method', Bare.prototype.method)).toEqual({});
  });
});

describe('the decoration-time check over a parameter shape', () => {
  it('refuses an index past an exact parameter list, naming the count', () => {
    expect(check('order:<2>', shapeOf('plain'))).toThrow(
      'placeholder <2> reads argument 2, but the method declares 2 parameters (valid indexes are 0 to 1)',
    );
    expect(check('job:<0>', shapeOf('none'))).toThrow('it takes no arguments');
  });

  it('leaves an index past a list that may end in a rest parameter to the call', () => {
    expect(check('batch:<3>', shapeOf('rest'))).not.toThrow();
    expect(check('x:<4>', shapeOf('withDefault'))).not.toThrow();
    expect(check('x:<9>', {})).not.toThrow();
  });

  it('refuses a property path into a parameter declared as a primitive, and allows one into an object', () => {
    expect(check('order:<0.id>', shapeOf('plain'))).toThrow(InvalidLockKeyTemplateError);
    expect(check('order:<0.id>', shapeOf('plain'))).toThrow('which is declared as a string; use <0>');
    expect(check('order:<1.id>', shapeOf('plain'))).not.toThrow();
  });
});
