/**
 * The Metrics tab: training scalars (of a chosen rank, or all ranks; smoothing, log scale,
 * zoom per chart; a fork's curves continue its parent's, dashed), then CPU and memory
 * of the job's processes and of the machine, and GPU charts when the job has GPU samples.
 */
import { Widget } from '@lumino/widgets';

import { TrainHubAPI } from '../api';
import { ISeries, LineChart } from '../charts';
import {
  GPU_CHARTS,
  SYSTEM_CHARTS,
  firstTime,
  gpuSeries,
  scalarRanks,
  scalarSeriesOf,
  systemSeries,
  withParent
} from '../metricsdata';
import { IGpuRecord, IScalarRecord, ISystemRecord, MetricKind } from '../models';
import { wsApiUrl } from '../request';
import { ResumableSocket } from '../socket';
import { rankSelect, setOptions } from './rankselect';

interface IParent {
  id: string;
  name: string;
  step: number | null;
  scalars: IScalarRecord[];
}

const CHART = { width: 380, height: 200 };

export class MetricsTab extends Widget {
  private readonly records: Record<MetricKind, unknown[]> = { scalars: [], gpu: [], system: [] };
  private readonly offsets: Record<MetricKind, number> = { scalars: 0, gpu: 0, system: 0 };
  private readonly sockets: ResumableSocket[] = [];
  private readonly charts = new Map<string, LineChart>();
  private readonly scalarBox: HTMLDivElement;
  private readonly systemBox: HTMLDivElement;
  private readonly gpuHeading: HTMLHeadingElement;
  private readonly gpuBox: HTMLDivElement;
  private readonly rankSelect: HTMLSelectElement;
  private readonly rankNote: HTMLSpanElement;
  private readonly parentNote: HTMLParagraphElement;
  private readonly smoothing: HTMLInputElement;
  private readonly smoothingValue: HTMLOutputElement;
  private readonly logBox: HTMLInputElement;
  private forkedFrom: IParent | null = null;
  private rank: number | 'all' = 0;
  private dirty = false;
  private timer: ReturnType<typeof setInterval> | null = null;

  constructor(
    private readonly api: TrainHubAPI,
    private readonly jobId: string
  ) {
    super();
    this.addClass('jp-trainhub-metrics');
    this.title.label = 'Metrics';

    const bar = document.createElement('div');
    bar.className = 'jp-trainhub-toolbar jp-trainhub-metrics-toolbar';
    this.rankSelect = rankSelect('Scalars of rank', v => {
      this.rank = v === 'all' ? 'all' : Number(v);
      this.redraw();
    });
    const rankLabel = document.createElement('label');
    rankLabel.append(document.createTextNode('Scalars of '), this.rankSelect);
    this.rankNote = document.createElement('span');
    this.rankNote.className = 'jp-trainhub-muted jp-trainhub-metrics-rank-note';

    this.smoothing = document.createElement('input');
    this.smoothing.type = 'range';
    this.smoothing.min = '0';
    this.smoothing.max = '0.99';
    this.smoothing.step = '0.01';
    this.smoothing.value = '0.6';
    this.smoothing.setAttribute('aria-label', 'Smoothing');
    this.smoothingValue = document.createElement('output');
    this.smoothingValue.className = 'jp-trainhub-metrics-smoothing-value';
    this.smoothing.addEventListener('input', () => this.applyOptions());
    const smoothLabel = document.createElement('label');
    smoothLabel.title = 'Exponential moving average of the values (as TensorBoard draws it)';
    smoothLabel.append(document.createTextNode('Smoothing '), this.smoothing, this.smoothingValue);

    this.logBox = document.createElement('input');
    this.logBox.type = 'checkbox';
    this.logBox.setAttribute('aria-label', 'Log scale');
    this.logBox.addEventListener('change', () => this.applyOptions());
    const logLabel = document.createElement('label');
    logLabel.append(this.logBox, document.createTextNode(' log scale'));

    const hint = document.createElement('span');
    hint.className = 'jp-trainhub-muted';
    hint.textContent = 'drag to zoom · double-click to reset';
    bar.append(rankLabel, this.rankNote, smoothLabel, logLabel, hint);

    this.parentNote = document.createElement('p');
    this.parentNote.className = 'jp-trainhub-muted jp-trainhub-metrics-parent';
    this.parentNote.hidden = true;

    const h1 = this.heading('Training');
    this.scalarBox = this.grid();
    const h2 = this.heading('Processes and machine');
    this.systemBox = this.grid();
    this.gpuHeading = this.heading('GPUs');
    this.gpuBox = this.grid();
    this.gpuHeading.hidden = this.gpuBox.hidden = true;
    this.node.append(
      bar,
      this.parentNote,
      h1,
      this.scalarBox,
      h2,
      this.systemBox,
      this.gpuHeading,
      this.gpuBox
    );
    this.smoothingValue.textContent = this.smoothing.value;
  }

  start(): void {
    if (this.sockets.length) {
      return;
    }
    for (const kind of ['scalars', 'system', 'gpu'] as MetricKind[]) {
      this.sockets.push(
        new ResumableSocket({
          url: () =>
            wsApiUrl(this.api.settings, ['jobs', this.jobId, 'metrics', kind, 'stream'], {
              offset: this.offsets[kind]
            }),
          WebSocket: this.api.settings.WebSocket,
          onMessage: data => this.onMessage(kind, data)
        })
      );
    }
    void this.loadParent();
    this.timer = setInterval(() => this.draw(), 1000);
    this.redraw();
  }

  dispose(): void {
    this.sockets.forEach(s => s.dispose());
    if (this.timer) {
      clearInterval(this.timer);
    }
    this.charts.forEach(c => c.dispose());
    super.dispose();
  }

  protected onAfterShow(): void {
    this.redraw();
  }

  /** The job a fork started from, with its scalars (complete: it has checkpoints). */
  private async loadParent(): Promise<void> {
    try {
      const job = await this.api.describe(this.jobId);
      const ref = job.spec.fork_from;
      if (!ref) {
        return;
      }
      const parent = await this.api.describe(ref.job_id);
      const scalars: IScalarRecord[] = [];
      let offset = 0;
      for (;;) {
        const page = await this.api.metrics<IScalarRecord>(ref.job_id, 'scalars', offset);
        scalars.push(...page.records);
        if (!page.records.length || page.next_offset === offset) {
          break;
        }
        offset = page.next_offset;
      }
      this.forkedFrom = { id: parent.id, name: parent.name, step: ref.step ?? null, scalars };
      this.parentNote.textContent =
        `Continues ${parent.name} (${parent.id}) from ` +
        (ref.step !== null && ref.step !== undefined
          ? `step ${ref.step}`
          : 'its latest checkpoint') +
        ': its curves before that are dashed.';
      this.parentNote.hidden = false;
      this.redraw();
    } catch {
      // The parent may be gone; the job's own curves stand alone.
    }
  }

  private onMessage(kind: MetricKind, data: unknown): void {
    const msg = data as { records?: unknown[]; next_offset?: number };
    if (!Array.isArray(msg.records) || typeof msg.next_offset !== 'number') {
      return;
    }
    this.offsets[kind] = msg.next_offset;
    const target = this.records[kind];
    for (const r of msg.records) {
      target.push(r);
    }
    this.dirty = true;
  }

  private redraw(): void {
    this.dirty = true;
    this.draw();
  }

  private applyOptions(): void {
    this.smoothingValue.textContent = this.smoothing.value;
    for (const [key, chart] of this.charts) {
      if (key.startsWith('scalar:')) {
        chart.setOptions(this.scalarOptions());
      }
    }
  }

  private scalarOptions() {
    return { smoothing: Number(this.smoothing.value), logY: this.logBox.checked };
  }

  private draw(): void {
    if (!this.dirty || !this.isVisible) {
      return;
    }
    this.dirty = false;
    this.drawScalars();
    const system = this.records.system as ISystemRecord[];
    const gpu = this.records.gpu as IGpuRecord[];
    const t0 = firstTime(system, gpu);
    this.fill(
      this.systemBox,
      SYSTEM_CHARTS.map(c => [
        `system:${c.title}`,
        { title: c.title, unit: c.unit, yRange: c.yRange, xLabel: 's' },
        systemSeries(system, c, t0)
      ]),
      'No CPU or memory samples yet.'
    );
    this.gpuHeading.hidden = this.gpuBox.hidden = !gpu.length;
    if (gpu.length) {
      this.fill(
        this.gpuBox,
        GPU_CHARTS.map(c => [
          `gpu:${c.title}`,
          { title: c.title, unit: c.unit, yRange: c.yRange, xLabel: 's' },
          gpuSeries(gpu, c.value, t0)
        ]),
        ''
      );
    }
  }

  private drawScalars(): void {
    const records = this.records.scalars as IScalarRecord[];
    const parentScalars = this.forkedFrom?.scalars ?? [];
    const ranks = [...new Set([...scalarRanks(records), ...scalarRanks(parentScalars)])].sort(
      (a, b) => a - b
    );
    this.updateRanks(ranks.length ? ranks : [0]);
    let series = scalarSeriesOf(records, this.rank);
    if (this.forkedFrom) {
      series = withParent(
        series,
        scalarSeriesOf(parentScalars, this.rank),
        this.forkedFrom.step,
        `parent ${this.forkedFrom.name}`
      );
    }
    this.fill(
      this.scalarBox,
      [...series.entries()].map(([name, s]) => [
        `scalar:${name}`,
        { title: name, xLabel: 'step', ...this.scalarOptions() },
        s
      ]),
      'No training scalars yet (trainhub.log(step=..., loss=...)).'
    );
  }

  /** Keep the rank choice stated: one rank logged, or pick one or all. */
  private updateRanks(ranks: number[]): void {
    const options = ranks.length > 1 ? [...ranks.map(String), 'all'] : ranks.map(String);
    const current = [...this.rankSelect.options].map(o => o.value);
    if (current.join() !== options.join()) {
      setOptions(
        this.rankSelect,
        options.map(v => [v, v === 'all' ? 'all ranks' : `rank ${v}`])
      );
    }
    if (!options.includes(String(this.rank))) {
      this.rank = ranks[0];
    }
    this.rankSelect.value = String(this.rank);
    this.rankSelect.disabled = options.length < 2;
    this.rankNote.textContent =
      ranks.length > 1
        ? ''
        : `only rank ${ranks[0]} logged scalars (trainhub.log(..., rank0_only=False) logs every rank)`;
  }

  /** Put one chart per entry into `box`, reusing each chart (and its zoom) by key. */
  private fill(
    box: HTMLElement,
    entries: [string, ConstructorParameters<typeof LineChart>[0], ISeries[]][],
    empty: string
  ): void {
    const wanted = entries.filter(([, , s]) => s.some(x => x.points.length));
    box.textContent = '';
    if (!wanted.length && empty) {
      box.append(this.note(empty));
    }
    for (const [key, options, series] of wanted) {
      let chart = this.charts.get(key);
      if (!chart) {
        chart = new LineChart({ ...CHART, ...options });
        this.charts.set(key, chart);
      } else {
        chart.setOptions(options);
      }
      chart.setSeries(series);
      box.append(chart.node);
    }
  }

  private heading(text: string): HTMLHeadingElement {
    const h = document.createElement('h3');
    h.textContent = text;
    return h;
  }

  private grid(): HTMLDivElement {
    const d = document.createElement('div');
    d.className = 'jp-trainhub-chart-grid';
    return d;
  }

  private note(text: string): HTMLElement {
    const p = document.createElement('p');
    p.className = 'jp-trainhub-empty';
    p.textContent = text;
    return p;
  }
}
