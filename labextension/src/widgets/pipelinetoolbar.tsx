/**
 * The pipeline editor's toolbar: Save, Check, Run (refused while the editor finds mistakes),
 * the Runs toggle, and the last thing said.
 */
import * as React from 'react';

export function PipelineToolbar(props: {
  busy: boolean;
  /** How many mistakes the editor finds itself: Run waits until there are none. */
  mistakes: number;
  showRuns: boolean;
  message: string;
  save: () => void;
  check: () => void;
  run: () => void;
  toggleRuns: () => void;
}): JSX.Element {
  return (
    <div className="jp-trainhub-pipeline-toolbar">
      <button type="button" className="jp-mod-styled" disabled={props.busy} onClick={props.save}>
        Save
      </button>
      <button
        type="button"
        className="jp-mod-styled jp-trainhub-pipeline-check"
        disabled={props.busy}
        onClick={props.check}
      >
        Check
      </button>
      <button
        type="button"
        className="jp-mod-styled jp-mod-accept jp-trainhub-pipeline-run"
        disabled={props.busy || props.mistakes > 0}
        title={props.mistakes ? 'Fix the mistakes first' : 'Save and start a run'}
        onClick={props.run}
      >
        Run
      </button>
      <button
        type="button"
        className="jp-mod-styled jp-trainhub-pipeline-runs-toggle"
        aria-pressed={props.showRuns}
        onClick={props.toggleRuns}
      >
        Runs
      </button>
      <span className="jp-trainhub-pipeline-message" role="status">
        {props.message}
      </span>
    </div>
  );
}
