/** The Metrics tab: live GPU (utilization, memory, power, temperature) and training scalars. */
import { Widget } from '@lumino/widgets';

import { TrainHubAPI } from '../api';
import { lineChart } from '../charts';
import { GPU_CHARTS, gpuSeries, scalarSeries } from '../metricsdata';
import { IGpuRecord, IScalarRecord, MetricKind } from '../models';
import { wsApiUrl } from '../request';
import { ResumableSocket } from '../socket';

export class MetricsTab extends Widget {
  private readonly gpu: IGpuRecord[] = [];
  private readonly scalars: IScalarRecord[] = [];
  private readonly sockets: ResumableSocket[] = [];
  private readonly offsets: Record<string, number> = { gpu: 0, scalars: 0 };
  private readonly scalarBox: HTMLDivElement;
  private readonly gpuBox: HTMLDivElement;
  private dirty = false;
  private timer: ReturnType<typeof setInterval> | null = null;

  constructor(
    private readonly api: TrainHubAPI,
    private readonly jobId: string
  ) {
    super();
    this.addClass('jp-trainhub-metrics');
    this.title.label = 'Metrics';
    const h1 = document.createElement('h3');
    h1.textContent = 'Training';
    this.scalarBox = document.createElement('div');
    this.scalarBox.className = 'jp-trainhub-chart-grid';
    const h2 = document.createElement('h3');
    h2.textContent = 'GPUs';
    this.gpuBox = document.createElement('div');
    this.gpuBox.className = 'jp-trainhub-chart-grid';
    this.node.append(h1, this.scalarBox, h2, this.gpuBox);
  }

  start(): void {
    if (this.sockets.length) {
      return;
    }
    for (const kind of ['scalars', 'gpu'] as MetricKind[]) {
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
    this.timer = setInterval(() => this.draw(), 1000);
    this.dirty = true;
    this.draw();
  }

  dispose(): void {
    this.sockets.forEach(s => s.dispose());
    if (this.timer) {
      clearInterval(this.timer);
    }
    super.dispose();
  }

  private onMessage(kind: MetricKind, data: unknown): void {
    const msg = data as { records?: unknown[]; next_offset?: number; type?: string };
    if (!Array.isArray(msg.records) || typeof msg.next_offset !== 'number') {
      return;
    }
    this.offsets[kind] = msg.next_offset;
    const target = (kind === 'gpu' ? this.gpu : this.scalars) as unknown[];
    for (const r of msg.records) {
      target.push(r);
    }
    this.dirty = true;
  }

  private draw(): void {
    if (!this.dirty || !this.isVisible) {
      return;
    }
    this.dirty = false;
    this.scalarBox.textContent = '';
    const series = scalarSeries(this.scalars);
    if (!series.size) {
      this.scalarBox.append(this.note('No training scalars yet (trainhub.log(step=..., loss=...)).'));
    }
    for (const s of series.values()) {
      this.scalarBox.append(lineChart([s], { title: s.label, xLabel: 'step' }));
    }
    this.gpuBox.textContent = '';
    if (!this.gpu.length) {
      this.gpuBox.append(this.note('No GPU samples (the job uses no GPU, or none was readable).'));
      return;
    }
    for (const c of GPU_CHARTS) {
      this.gpuBox.append(
        lineChart(gpuSeries(this.gpu, c.value), {
          title: c.title,
          unit: c.unit,
          yRange: c.yRange,
          xLabel: 's'
        })
      );
    }
  }

  protected onAfterShow(): void {
    this.dirty = true;
    this.draw();
  }

  private note(text: string): HTMLElement {
    const p = document.createElement('p');
    p.className = 'jp-trainhub-empty';
    p.textContent = text;
    return p;
  }
}
