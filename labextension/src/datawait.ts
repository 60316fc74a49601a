/**
 * Input stalls beside GPU utilization (pure): how much of each step a job's ranks waited for
 * their DataLoaders (trainhub/metrics/datawait.py, in GET jobs/{id} and jobs/{id}/usage) and
 * how busy its GPUs were, as the job view's Overview says them.
 */
import { IDataWait } from './models';

export interface IStallFacts {
  /** 'GPU utilization 38 %', or null without GPU samples. */
  gpu: string | null;
  /** 'waiting for data 62 % of each step', or null when no rank iterated a DataLoader. */
  wait: string | null;
  /** 'rank 0 65 %, rank 1 15 %' when the ranks differ by 10 points or more, else null. */
  ranks: string | null;
  /** The server's sentence ("62 % of each step waits for data: try num_workers=4, …"). */
  advice: string | null;
}

const percent = (share: number): string => `${Math.round(share * 100)} %`;

/** The facts shown; `busy`/`sampled`: the job's GPU-seconds busy and sampled so far. */
export function stallFacts(
  dataWait: IDataWait | null | undefined,
  busy: number | null | undefined,
  sampled: number | null | undefined
): IStallFacts {
  const gpu =
    sampled && sampled > 0 && busy !== null && busy !== undefined
      ? `GPU utilization ${percent(Math.min(1, Math.max(0, busy / sampled)))}`
      : null;
  const share = dataWait?.fraction;
  const wait =
    share === null || share === undefined
      ? null
      : `waiting for data ${percent(share)} of each step`;
  const shares = Object.entries(dataWait?.ranks ?? {})
    .filter((e): e is [string, number] => typeof e[1] === 'number')
    .sort((a, b) => Number(a[0]) - Number(b[0]));
  const values = shares.map(([, s]) => s);
  const spread = values.length > 1 ? Math.max(...values) - Math.min(...values) : 0;
  const ranks =
    spread >= 0.1 ? shares.map(([rank, s]) => `rank ${rank} ${percent(s)}`).join(', ') : null;
  return { gpu, wait, ranks, advice: dataWait?.advice ?? null };
}
