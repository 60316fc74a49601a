/**
 * The compare view: 2 to 10 jobs side by side (GET trainhub/api/compare), opened by the
 * command `trainhub:compare` with `{ids}`. Parameters, outcome, code, lineage, datasets,
 * packages and resources as tables with the differing rows first and marked; last and best
 * of every scalar; overlaid curves of one scalar against step or time (./comparesections).
 */
import { JupyterFrontEnd } from '@jupyterlab/application';
import { MainAreaWidget, ReactWidget } from '@jupyterlab/apputils';
import * as React from 'react';

import { TrainHubAPI } from '../api';
import { compareIds, IComparison, jobLabels, verdictCell } from '../compare';
import { formatDuration } from '../format';
import { Code, Curves, Scalars, Table } from './comparesections';
import { StateBadge } from './statebadge';

export const COMPARE_COMMAND = 'trainhub:compare';
/** Points per curve asked of the server: the chart draws a few per pixel column anyway. */
export const CURVE_POINTS = 2000;

function Comparison(props: {
  comparison: IComparison;
  openJob: (id: string) => void;
  scalarsPending: boolean;
}): JSX.Element {
  const { comparison, openJob, scalarsPending } = props;
  const labels = jobLabels(comparison.jobs);
  const notes = comparison.jobs.flatMap(j => j.notes.map(n => `${j.id}: ${n}`));
  return (
    <div className="jp-trainhub-compare">
      <section className="jp-trainhub-compare-section">
        <table className="jp-trainhub-compare-table jp-trainhub-compare-jobs">
          <thead>
            <tr>
              <th />
              {comparison.jobs.map((j, i) => (
                <th key={j.id}>
                  <button className="jp-trainhub-link" title={j.id} onClick={() => openJob(j.id)}>
                    {labels[i]}
                  </button>
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            <tr>
              <th scope="row">state</th>
              {comparison.jobs.map(j => (
                <td key={j.id}>
                  <StateBadge state={j.state} />
                </td>
              ))}
            </tr>
            <tr>
              <th scope="row">verdict</th>
              {comparison.jobs.map(j => {
                const cell = verdictCell(j);
                return (
                  <td
                    key={j.id}
                    className={cell.failed ? 'jp-trainhub-compare-verdict' : undefined}
                  >
                    {cell.text}
                  </td>
                );
              })}
            </tr>
            <tr>
              <th scope="row">elapsed</th>
              {comparison.jobs.map(j => (
                <td key={j.id}>
                  {j.elapsed_s === null || j.elapsed_s === undefined
                    ? 'did not run'
                    : formatDuration(j.elapsed_s)}
                </td>
              ))}
            </tr>
          </tbody>
        </table>
        {notes.map(n => (
          <p key={n} className="jp-trainhub-muted">
            {n}
          </p>
        ))}
      </section>
      {scalarsPending ? (
        <p className="jp-trainhub-empty jp-trainhub-compare-pending">
          Reading the training scalars of {comparison.jobs.length} jobs…
        </p>
      ) : (
        <>
          <Scalars comparison={comparison} labels={labels} />
          <Curves comparison={comparison} />
        </>
      )}
      <Table title="Parameters" labels={labels} rows={comparison.parameters} />
      <Code comparison={comparison} labels={labels} />
      <Table title="Lineage" labels={labels} rows={comparison.lineage} />
      <Table title="Datasets" labels={labels} rows={comparison.datasets} />
      <Table
        title="Packages whose versions differ"
        labels={labels}
        rows={comparison.packages}
        note={`${comparison.packages_same} packages installed alike in every job.`}
      />
      <Table title="Resources" labels={labels} rows={comparison.resources} />
      <Table title="Outcome" labels={labels} rows={comparison.outcome} />
    </div>
  );
}

class CompareBody extends ReactWidget {
  comparison: IComparison | null = null;
  /** The comparison shown was answered without scalars; the full one is on its way. */
  scalarsPending = true;
  error: string | null = null;

  constructor(private readonly openJob: (id: string) => void) {
    super();
    this.addClass('jp-trainhub-compare-body');
  }

  render(): JSX.Element {
    if (this.error) {
      return <div className="jp-trainhub-banner">{this.error}</div>;
    }
    if (!this.comparison) {
      return <div className="jp-trainhub-empty">Loading the comparison…</div>;
    }
    return (
      <Comparison
        comparison={this.comparison}
        openJob={this.openJob}
        scalarsPending={this.scalarsPending}
      />
    );
  }
}

/**
 * A comparison of `ids` in the main area; curves of at most `points` points (0: all). Two
 * requests: one without scalars, which answers quickly, paints the tables; the full one (the
 * scalar files of every job read) then adds scalars and curves.
 */
export class CompareView extends MainAreaWidget<CompareBody> {
  constructor(
    readonly ids: string[],
    api: TrainHubAPI,
    openJob: (id: string) => void,
    points = CURVE_POINTS
  ) {
    super({ content: new CompareBody(openJob) });
    this.id = `trainhub-compare-${points}-${ids.join('-')}`;
    this.addClass('jp-trainhub-compareview');
    this.title.label = `Compare ${ids.length} jobs`;
    this.title.caption = ids.join(', ');
    this.title.closable = true;
    const body = this.content;
    const fail = (e: unknown) => {
      body.error = (e as Error).message ?? String(e);
      body.update();
    };
    // The full request only once the quick one has answered: asked at once, it would read
    // the scalar files on the server meanwhile and slow the quick answer down.
    void api
      .compare(ids, { scalars: false })
      .then(c => {
        body.comparison = c;
        body.update();
        return api.compare(ids, { points: points || undefined });
      })
      .then(c => {
        body.comparison = c;
        body.scalarsPending = false;
        body.update();
      })
      .catch(fail);
  }
}

/**
 * Registers `trainhub:compare` ({ids: 2 to 10 job ids, points?: per curve, 0 for all}); one
 * view per set of ids.
 */
export function registerCompare(app: JupyterFrontEnd, api: TrainHubAPI): void {
  const views = new Map<string, CompareView>();
  app.commands.addCommand(COMPARE_COMMAND, {
    label: args => (Array.isArray(args.ids) ? `Compare ${args.ids.length} jobs` : 'Compare jobs'),
    caption: 'Parameters, code, lineage, resources, verdicts and scalars side by side',
    execute: args => {
      const ids = compareIds(args);
      const points = typeof args.points === 'number' ? args.points : CURVE_POINTS;
      const key = `${points}:${ids.join(',')}`;
      let view = views.get(key);
      if (!view || view.isDisposed) {
        const openJob = (id: string) => void app.commands.execute('trainhub:open-job', { id });
        view = new CompareView(ids, api, openJob, points);
        views.set(key, view);
        app.shell.add(view, 'main');
      }
      app.shell.activateById(view.id);
      return view;
    }
  });
}
