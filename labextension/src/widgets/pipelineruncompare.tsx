/**
 * Two runs of a pipeline step by step (command `trainhub:compare-pipeline-runs` with
 * `{ids: [a, b]}`, from the editor's runs list): each step's state, duration and job in each
 * run, which steps stand on the same result, and the two jobs of a step opened side by side
 * in the job comparison.
 */
import { MainAreaWidget, ReactWidget } from '@jupyterlab/apputils';
import { ServerConnection } from '@jupyterlab/services';
import * as React from 'react';

import {
  compareRuns,
  getRun,
  IDescribeRun,
  IStepSide,
  runDuration,
  runOutcome
} from '../pipelineruns';
import { LinkButton } from './linkbutton';

function Side(props: { side: IStepSide | null; openJob: (id: string) => void }): JSX.Element {
  const s = props.side;
  if (!s) {
    return <td className="jp-trainhub-muted">not in this run</td>;
  }
  return (
    <td>
      <span className={`jp-trainhub-state jp-trainhub-state-${s.state.replace(' ', '_')}`}>
        {s.state}
      </span>{' '}
      {s.duration}
      {s.detail ? <div className="jp-trainhub-muted">{s.detail}</div> : null}
      {s.job ? <LinkButton text={s.job} open={() => props.openJob(s.job!)} mono /> : null}
    </td>
  );
}

class CompareBody extends ReactWidget {
  runs: [IDescribeRun, IDescribeRun] | null = null;
  error = '';

  constructor(
    private readonly openJob: (id: string) => void,
    private readonly compareJobs: ((ids: string[]) => void) | null
  ) {
    super();
    this.addClass('jp-trainhub-pipeline-compare-body');
  }

  render(): JSX.Element {
    if (!this.runs) {
      return <div className="jp-trainhub-pipeline-compare">{this.error || 'Loading…'}</div>;
    }
    const [a, b] = this.runs;
    const now = Date.now() / 1000;
    return (
      <div className="jp-trainhub-pipeline-compare">
        <h2>
          Pipeline {a.name}: run {a.id} and run {b.id}
        </h2>
        <table className="jp-trainhub-table jp-trainhub-pipeline-compare-table">
          <thead>
            <tr>
              <th>step</th>
              {[a, b].map(r => (
                <th key={r.id} data-run={r.id}>
                  {r.id}
                  <div className="jp-trainhub-muted">
                    {runOutcome(r)}, {runDuration(r, now)}
                  </div>
                </th>
              ))}
              <th />
            </tr>
          </thead>
          <tbody>
            {compareRuns(a, b).map(row => (
              <tr key={row.step} data-step={row.step}>
                <td className="jp-trainhub-mono">{row.step}</td>
                <Side side={row.a} openJob={this.openJob} />
                <Side side={row.b} openJob={this.openJob} />
                <td>
                  {row.sameResult ? (
                    <span className="jp-trainhub-muted">the same result</span>
                  ) : row.a?.job && row.b?.job && this.compareJobs ? (
                    <button
                      type="button"
                      className="jp-mod-styled"
                      onClick={() => this.compareJobs!([row.a!.job!, row.b!.job!])}
                    >
                      Compare jobs
                    </button>
                  ) : null}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    );
  }
}

export class PipelineRunCompare extends MainAreaWidget<CompareBody> {
  constructor(
    readonly ids: [string, string],
    settings: ServerConnection.ISettings,
    openJob: (id: string) => void,
    compareJobs: ((ids: string[]) => void) | null
  ) {
    super({ content: new CompareBody(openJob, compareJobs) });
    this.id = `trainhub-pipeline-compare-${ids.join('-')}`;
    this.title.label = `${ids[0]} vs ${ids[1]}`;
    this.title.closable = true;
    void Promise.all(ids.map(id => getRun(settings, id))).then(
      ([a, b]) => {
        this.content.runs = [a, b];
        this.content.update();
      },
      e => {
        this.content.error = (e as Error).message ?? String(e);
        this.content.update();
      }
    );
  }
}
