import {
  mostOrdersAtOnce,
  orderSteps,
  stepsRunTooEarly,
  stepViolations,
  type OrderSteps,
  type RanStep,
} from '../../sample-app/demo/fulfilment-claims.js';
import type { FulfilmentView } from '../../sample-app/src/fulfilment/fulfilment.controller.js';

/* The checker of the sample's fulfilment claims (demo and e2e specs) finds what it must find. */

const ran = (step: RanStep['step'], start: number, end: number, instance = 'a'): RanStep => ({ step, instance, start, end });
const order = (orderId: string, steps: RanStep[]): OrderSteps => ({ orderId, paidOn: 'a', steps });

describe('sample fulfilment claims checker', () => {
  it('reads the recorded steps of a view in the order they started, leaving out steps not run', () => {
    const done = (step: string, startedAt: string, finishedAt: string) => ({
      outcome: 'shipped',
      instance: 'b',
      attempt: 1,
      fence: '1',
      step,
      startedAt,
      finishedAt,
    });
    const view = {
      orderId: 'o',
      group: 'order:o',
      steps: [
        {
          step: 'reserve',
          jobId: 'fulfil:o:reserve',
          job: null,
          done: done('reserve', '2030-01-01T00:00:00.200Z', '2030-01-01T00:00:00.300Z'),
        },
        { step: 'ship', jobId: 'fulfil:o:ship', job: null, done: done('ship', '2030-01-01T00:00:00.100Z', '2030-01-01T00:00:00.150Z') },
        { step: 'notify', jobId: 'fulfil:o:notify', job: { state: 'due', attempts: 0 }, done: null },
      ],
    } as FulfilmentView;
    const steps = orderSteps(view, 'a');
    expect(steps.steps.map((s) => [s.step, s.instance, s.end - s.start])).toEqual([
      ['ship', 'b', 50],
      ['reserve', 'b', 100],
    ]);
    expect(stepViolations(steps)).toEqual(['o: notify did not run', 'o: steps started in the order ship → reserve']);
  });

  it('accepts steps one after the other, a step starting the instant the one before ended', () => {
    expect(stepViolations(order('o', [ran('reserve', 0, 10), ran('ship', 10, 20, 'b'), ran('notify', 25, 30)]))).toEqual([]);
  });

  it('reports a step that started before the one it follows ended', () => {
    expect(stepViolations(order('o', [ran('reserve', 0, 10), ran('ship', 8, 20), ran('notify', 20, 30)]))).toEqual([
      'o: ship started 2 ms before reserve ended',
    ]);
  });

  it('counts the most orders with a step running at one instant', () => {
    const one = order('1', [ran('reserve', 0, 10), ran('ship', 10, 20), ran('notify', 20, 30)]);
    const two = order('2', [ran('reserve', 30, 40), ran('ship', 40, 50), ran('notify', 50, 60)]);
    expect(mostOrdersAtOnce([one, two])).toBe(1);
    const three = order('3', [ran('reserve', 5, 15), ran('ship', 15, 25), ran('notify', 25, 35)]);
    expect(mostOrdersAtOnce([one, two, three])).toBe(2);
  });

  it('finds the log lines of steps run while the step before had not succeeded', () => {
    const output = [
      'LOG [FulfilmentService] order.fulfil reserve o: reserved (group order:o, attempt 1, fence 7)',
      'WARN [FulfilmentService] order.fulfil ship o: reserve has not succeeded; nothing to do until it does',
    ].join('\n');
    expect(stepsRunTooEarly(output)).toEqual([output.split('\n')[1]]);
  });
});
