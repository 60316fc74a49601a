/** Metric records -> chart series (pure). */
import { ISeries } from './charts';
import { IGpuRecord, IScalarRecord } from './models';

export const GPU_CHARTS: {
  title: string;
  unit: string;
  value: (r: IGpuRecord) => number | null | undefined;
  yRange?: [number, number];
}[] = [
  { title: 'GPU utilization', unit: '%', value: r => r.utilization, yRange: [0, 100] },
  {
    title: 'GPU memory',
    unit: 'GiB',
    value: r => (r.memory_used === null || r.memory_used === undefined ? null : r.memory_used / 2 ** 30)
  },
  { title: 'Power', unit: 'W', value: r => r.power_w },
  { title: 'Temperature', unit: '°C', value: r => r.temperature_c }
];

/** Series per GPU for one reading; time relative to the first sample, in seconds. */
export function gpuSeries(
  records: IGpuRecord[],
  value: (r: IGpuRecord) => number | null | undefined
): ISeries[] {
  const t0 = records.length ? records[0].time : 0;
  const byGpu = new Map<number, [number, number][]>();
  for (const r of records) {
    const v = value(r);
    if (v === null || v === undefined || !Number.isFinite(v)) {
      continue;
    }
    let points = byGpu.get(r.gpu);
    if (!points) {
      points = [];
      byGpu.set(r.gpu, points);
    }
    points.push([r.time - t0, v]);
  }
  return [...byGpu.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([gpu, points]) => ({ label: `GPU ${gpu}`, points }));
}

/** One series per scalar name, by step (the latest value wins when a step repeats). */
export function scalarSeries(records: IScalarRecord[]): Map<string, ISeries> {
  const byName = new Map<string, Map<number, number>>();
  for (const r of records) {
    if (typeof r.value !== 'number' || !Number.isFinite(r.value)) {
      continue;
    }
    let steps = byName.get(r.name);
    if (!steps) {
      steps = new Map();
      byName.set(r.name, steps);
    }
    steps.set(r.step, r.value);
  }
  const out = new Map<string, ISeries>();
  for (const [name, steps] of [...byName.entries()].sort((a, b) => a[0].localeCompare(b[0]))) {
    out.set(name, {
      label: name,
      points: [...steps.entries()].sort((a, b) => a[0] - b[0])
    });
  }
  return out;
}
