/** One JupyterLab icon per job state, for tab titles and headings (coloured by the theme). */
import {
  checkIcon,
  circleEmptyIcon,
  errorIcon,
  LabIcon,
  refreshIcon,
  runningIcon,
  stopIcon,
  historyIcon,
  pauseIcon
} from '@jupyterlab/ui-components';

import { JobState } from './models';

const ICONS: Record<JobState, LabIcon> = {
  queued: historyIcon,
  starting: circleEmptyIcon,
  running: runningIcon,
  retrying: refreshIcon,
  succeeded: checkIcon,
  failed: errorIcon,
  cancelled: stopIcon,
  suspended: pauseIcon
};

export function stateIcon(state: JobState): LabIcon {
  return ICONS[state] ?? circleEmptyIcon;
}

/** The class that colours a state's icon (see style/base.css). */
export function stateIconClass(state: JobState): string {
  return `jp-trainhub-state-icon jp-trainhub-state-icon-${state}`;
}
