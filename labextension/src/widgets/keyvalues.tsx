/** The Overview's plain pieces: key/value lists and folded sections. */
import * as React from 'react';

export function text(v: unknown): string {
  return typeof v === 'string' ? v : JSON.stringify(v);
}

export function KeyValues(props: { data: Record<string, unknown> }): JSX.Element {
  return (
    <dl className="jp-trainhub-kv">
      {Object.entries(props.data).map(([k, v]) => (
        <React.Fragment key={k}>
          <dt>{k}</dt>
          <dd>{text(v)}</dd>
        </React.Fragment>
      ))}
    </dl>
  );
}

/** Folded away until asked for: raw JSON, package lists, tracebacks. */
export function Folded(props: { summary: string; className?: string; children: React.ReactNode }) {
  return (
    <details className={`jp-trainhub-folded ${props.className ?? ''}`}>
      <summary>{props.summary}</summary>
      {props.children}
    </details>
  );
}
