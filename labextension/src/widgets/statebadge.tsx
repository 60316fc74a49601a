/** A job's state as a coloured badge (the Jobs panel, the job view, the compare view). */
import * as React from 'react';

import { JobState } from '../models';

export function StateBadge(props: { state: JobState }): JSX.Element {
  return (
    <span className={`jp-trainhub-state jp-trainhub-state-${props.state}`}>{props.state}</span>
  );
}
