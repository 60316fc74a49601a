/** A button that reads as a link (a job's id, a run's, a notebook's path): a click opens it. */
import * as React from 'react';

export function LinkButton(props: {
  text: string;
  open: () => void;
  /** In monospace: an id or a path. */
  mono?: boolean;
}): JSX.Element {
  return (
    <button
      type="button"
      className={`jp-trainhub-link${props.mono ? ' jp-trainhub-mono' : ''}`}
      onClick={props.open}
    >
      {props.text}
    </button>
  );
}
