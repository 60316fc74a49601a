/** What the Overview reads besides the job's description: scalars, events, checkpoints. */
import * as React from 'react';

import { TrainHubAPI } from '../api';
import { cellsDone, IScalarSummary, summarizeScalars } from '../jobsummary';
import { ICheckpointInfo, IDescribeJob, IScalarRecord, TERMINAL_STATES } from '../models';
import { requestAPI } from '../request';

export interface IJobRecords {
  scalars: IScalarSummary[];
  cellsDone: number;
  checkpoints: ICheckpointInfo[] | null;
  notebookParameters: Record<string, unknown> | null;
}

/**
 * Rank 0's scalars and the job's events, read incrementally every few seconds while the job
 * is active and once more when it has ended; the checkpoints and the notebook's parameters
 * once each.
 */
export function useJobRecords(api: TrainHubAPI, job: IDescribeJob): IJobRecords {
  const active = !TERMINAL_STATES.has(job.state);
  const scalars = React.useRef<IScalarRecord[]>([]);
  const events = React.useRef<Record<string, unknown>[]>([]);
  const offsets = React.useRef({ scalars: 0, events: 0 });
  const [records, setRecords] = React.useState<IJobRecords>({
    scalars: [],
    cellsDone: 0,
    checkpoints: null,
    notebookParameters: null
  });
  React.useEffect(() => {
    let stopped = false;
    const read = async () => {
      try {
        const m = await api.metrics<IScalarRecord>(job.id, 'scalars', offsets.current.scalars);
        const e = await requestAPI<{ events: Record<string, unknown>[]; next_offset: number }>(
          ['jobs', job.id, 'events'],
          { query: { offset: offsets.current.events } },
          api.settings
        );
        if (stopped) {
          return;
        }
        offsets.current = { scalars: m.next_offset, events: e.next_offset };
        scalars.current.push(...m.records.filter(r => (r.rank ?? 0) === 0));
        events.current.push(...e.events);
        setRecords(r => ({
          ...r,
          scalars: summarizeScalars(scalars.current),
          cellsDone: cellsDone(events.current)
        }));
      } catch {
        // The overview still shows the description; the next read tries again.
      }
    };
    void read();
    const timer = active ? setInterval(() => void read(), 3000) : null;
    return () => {
      stopped = true;
      if (timer) {
        clearInterval(timer);
      }
    };
  }, [api, job.id, active]);
  React.useEffect(() => {
    if (active) {
      return;
    }
    void api
      .checkpoints(job.id)
      .then(r => setRecords(s => ({ ...s, checkpoints: r.checkpoints })))
      .catch(() => setRecords(s => ({ ...s, checkpoints: [] })));
  }, [api, job.id, active]);
  const source = job.spec.source;
  React.useEffect(() => {
    if (source.kind !== 'notebook') {
      return;
    }
    void api
      .notebookParameters(source.path)
      .then(r => setRecords(s => ({ ...s, notebookParameters: r.parameters })))
      .catch(() => setRecords(s => ({ ...s, notebookParameters: {} })));
  }, [api, source.kind, source.path]);
  return records;
}
