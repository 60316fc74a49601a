/**
 * The sections of the compare view: a table with the differing rows first and marked, the code
 * (a summary and its diff), the last and best of every scalar and their curves overlaid
 * against step or time (charts.ts). Every value, name and diff line goes in as text (React
 * escapes it), never as HTML.
 */
import * as React from 'react';

import { LineChart } from '../charts';
import {
  cellText,
  codeSummary,
  curves,
  defaultScalar,
  diffLineKind,
  differingFirst,
  ICompareRow,
  IComparison,
  pointText,
  XAxis
} from '../compare';

const CHART_WIDTH = 760;
const CHART_HEIGHT = 300;

export function Table(props: {
  title: string;
  labels: string[];
  rows: ICompareRow[];
  note?: string;
}): JSX.Element | null {
  const { title, labels, rows, note } = props;
  if (!rows.length && !note) {
    return null;
  }
  const differing = rows.filter(r => r.differs).length;
  return (
    <section className="jp-trainhub-compare-section">
      <h3>
        {title}{' '}
        <span className="jp-trainhub-muted">
          {differing ? `${differing} of ${rows.length} differ` : rows.length ? 'all alike' : ''}
        </span>
      </h3>
      {rows.length ? (
        <table className="jp-trainhub-compare-table">
          <LabelsHead labels={labels} />
          <tbody>
            {differingFirst(rows).map(row => (
              <tr key={row.name} className={row.differs ? 'jp-trainhub-compare-differs' : ''}>
                <th scope="row">{row.name}</th>
                {row.values.map((v, i) => (
                  <td key={i}>{cellText(v)}</td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      {note ? <p className="jp-trainhub-muted">{note}</p> : null}
    </section>
  );
}

/** A comparison table's header: an empty corner, then a column per job. */
function LabelsHead(props: { labels: string[] }): JSX.Element {
  return (
    <thead>
      <tr>
        <th />
        {props.labels.map((l, i) => (
          <th key={i}>{l}</th>
        ))}
      </tr>
    </thead>
  );
}

function DiffText(props: { text: string }): JSX.Element {
  return (
    <pre className="jp-trainhub-compare-diff">
      {props.text.split('\n').map((line, i) => (
        <span key={i} className={`jp-trainhub-diff-${diffLineKind(line)}`}>
          {line}
          {'\n'}
        </span>
      ))}
    </pre>
  );
}

export function Code(props: { comparison: IComparison; labels: string[] }): JSX.Element {
  const { comparison, labels } = props;
  const label = (id: string) => labels[comparison.jobs.findIndex(j => j.id === id)] ?? id;
  return (
    <section className="jp-trainhub-compare-section jp-trainhub-compare-code">
      <h3>Code that ran, against {label(comparison.jobs[0].id)}</h3>
      {comparison.code.map(diff => (
        <details key={diff.job_id} open={!diff.identical && !diff.note}>
          <summary>
            {label(diff.job_id)}: {codeSummary(diff)}
          </summary>
          {diff.changes.map((c, i) => (
            <DiffText key={i} text={c.diff} />
          ))}
        </details>
      ))}
    </section>
  );
}

export function Scalars(props: { comparison: IComparison; labels: string[] }): JSX.Element | null {
  const { comparison, labels } = props;
  if (!comparison.scalars.length) {
    return null;
  }
  return (
    <section className="jp-trainhub-compare-section">
      <h3>
        Training scalars <span className="jp-trainhub-muted">last and best (★ the best job)</span>
      </h3>
      <table className="jp-trainhub-compare-table jp-trainhub-compare-scalars">
        <LabelsHead labels={labels} />
        <tbody>
          {comparison.scalars.map(s => (
            <React.Fragment key={s.name}>
              <tr>
                <th scope="row">{s.name} last</th>
                {s.last.map((p, i) => (
                  <td key={i}>{pointText(p)}</td>
                ))}
              </tr>
              <tr>
                <th scope="row">
                  {s.name} best ({s.goal === 'min' ? 'lowest' : 'highest'})
                </th>
                {s.best.map((p, i) => {
                  const best = comparison.jobs[i].id === s.best_job;
                  return (
                    <td key={i} className={best ? 'jp-trainhub-compare-best' : ''}>
                      {pointText(p)}
                      {best ? ' ★' : ''}
                    </td>
                  );
                })}
              </tr>
            </React.Fragment>
          ))}
        </tbody>
      </table>
    </section>
  );
}

export function Curves(props: { comparison: IComparison }): JSX.Element | null {
  const { comparison } = props;
  const [name, setName] = React.useState(defaultScalar(comparison.scalars));
  const [x, setX] = React.useState<XAxis>('step');
  const [logY, setLogY] = React.useState(false);
  const box = React.useRef<HTMLDivElement>(null);
  const chart = React.useRef<LineChart | null>(null);
  React.useEffect(() => {
    if (!box.current || name === null) {
      return;
    }
    const options = {
      title: name,
      xLabel: x === 'step' ? 'step' : 'seconds',
      width: CHART_WIDTH,
      height: CHART_HEIGHT,
      logY
    };
    if (!chart.current) {
      chart.current = new LineChart(options);
      box.current.appendChild(chart.current.node);
    } else {
      chart.current.setOptions(options);
    }
    chart.current.setSeries(curves(comparison, name, x));
  }, [comparison, name, x, logY]);
  if (name === null) {
    return null;
  }
  const totals = comparison.series.filter(s => s.name === name).map(s => s.total);
  return (
    <section className="jp-trainhub-compare-section jp-trainhub-compare-curves">
      <h3>Curves</h3>
      <div className="jp-trainhub-compare-controls">
        <label>
          scalar{' '}
          <select value={name} onChange={e => setName(e.target.value)}>
            {comparison.scalars.map(s => (
              <option key={s.name} value={s.name}>
                {s.name}
              </option>
            ))}
          </select>
        </label>
        <label>
          against{' '}
          <select value={x} onChange={e => setX(e.target.value as XAxis)}>
            <option value="step">step</option>
            <option value="time">time since start</option>
          </select>
        </label>
        <label>
          <input type="checkbox" checked={logY} onChange={e => setLogY(e.target.checked)} /> log
          scale
        </label>
        <span className="jp-trainhub-muted">
          {totals.reduce((a, b) => a + b, 0).toLocaleString()} points
        </span>
      </div>
      <div ref={box} className="jp-trainhub-compare-chart" />
    </section>
  );
}
