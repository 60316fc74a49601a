import { ITimelineEvent, JobState } from '../models';
import {
  canResume,
  canSuspend,
  suspendedLine,
  suspendPending,
  suspendQuestion
} from '../suspendstate';

const at = (type: string, extra: Record<string, unknown> = {}): ITimelineEvent =>
  ({ time: 1, type, ...extra }) as ITimelineEvent;

describe('Suspend and Resume in the job view', () => {
  it('offers Suspend until the job ends or is suspended, and Resume only when suspended', () => {
    expect(
      ['queued', 'starting', 'running', 'retrying'].every(s => canSuspend(s as JobState))
    ).toBe(true);
    for (const s of ['succeeded', 'failed', 'cancelled', 'suspended'] as const) {
      expect(canSuspend(s)).toBe(false);
    }
    expect(canResume('suspended')).toBe(true);
    expect(canResume('running')).toBe(false);
  });

  it('reads a suspend as pending until the job is suspended, and not again once resumed', () => {
    const asked = [at('state', { state: 'running' }), at('suspend_requested')];
    expect(suspendPending({ state: 'running', timeline: asked })).toBe(true);
    const done = [...asked, at('suspended'), at('state', { state: 'suspended' })];
    expect(suspendPending({ state: 'suspended', timeline: done })).toBe(false);
    const resumed = [...done, at('state', { state: 'queued' }), at('state', { state: 'running' })];
    expect(suspendPending({ state: 'running', timeline: resumed })).toBe(false);
    expect(suspendPending({ state: 'succeeded', timeline: asked })).toBe(false);
  });

  it('says what a suspend does, for a queued and for a running job', () => {
    const job = { name: 'train', id: 'train-1a2b' };
    expect(suspendQuestion({ ...job, state: 'queued' })).toBe(
      'Suspend train (train-1a2b)? It has not started yet: it leaves the queue until you resume it.'
    );
    expect(suspendQuestion({ ...job, state: 'running' })).toContain('GPUs are freed');
    expect(suspendedLine({ suspended_step: 74 })).toBe(
      'Suspended at step 74: its GPUs are free; Resume continues from that checkpoint.'
    );
    expect(suspendedLine({ suspended_step: null })).toContain('before its first checkpoint');
  });
});
