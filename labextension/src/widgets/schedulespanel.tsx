/**
 * The Schedules side panel: the user's schedules (what each runs, when, whether paused, how
 * its last run went), their actions, and a schedule's history of runs when expanded. It asks
 * the server again every few seconds while shown, and at once after an action.
 */
import * as React from 'react';

import { TrainHubAPI } from '../api';
import { ISchedule } from '../schedules';
import { IScheduleActions, ScheduleRow } from './schedulerow';
import { IPolled, SidePanel, SidePanelFrame, usePolling } from './sidepanel';

const POLL_MS = 5000;

function SchedulesList(props: {
  api: TrainHubAPI;
  actions: IScheduleActions;
  polled: IPolled;
}): JSX.Element {
  const { api, actions, polled } = props;
  const [schedules, setSchedules] = React.useState<ISchedule[] | null>(null);
  const [error, setError] = React.useState('');
  const [expanded, setExpanded] = React.useState<string | null>(null);
  const [detail, setDetail] = React.useState<ISchedule | null>(null);
  const expandedRef = React.useRef(expanded);
  expandedRef.current = expanded;

  const load = React.useCallback(async () => {
    try {
      const listed = await api.listSchedules();
      setSchedules(listed.schedules);
      setError('');
      const open = expandedRef.current;
      if (open && listed.schedules.some(s => s.id === open)) {
        const d = await api.describeSchedule(open);
        if (expandedRef.current === open) {
          setDetail(d);
        }
      }
    } catch (e) {
      setError((e as Error).message);
    }
  }, [api]);

  React.useEffect(() => void load(), [load]);
  usePolling(load, polled, POLL_MS);

  const toggle = (id: string) => {
    const next = expanded === id ? null : id;
    setExpanded(next);
    setDetail(null);
    expandedRef.current = next;
    if (next) {
      void load();
    }
  };

  return (
    <SidePanelFrame
      className="jp-trainhub-schedules"
      title="Schedules"
      buttons={[
        {
          text: '+',
          title: 'Schedule the open notebook',
          label: 'New schedule',
          onClick: actions.create
        }
      ]}
      reload={() => void load()}
      error={error}
      listClassName="jp-trainhub-schedule-list"
      items={schedules}
      empty="No schedules yet. Open a notebook and press “Schedule notebook…”."
      row={s => (
        <ScheduleRow
          key={s.id}
          schedule={s}
          detail={expanded === s.id ? detail : null}
          expanded={expanded === s.id}
          onToggle={toggle}
          actions={actions}
        />
      )}
    />
  );
}

export class SchedulesPanel extends SidePanel {
  constructor(
    private readonly api: TrainHubAPI,
    private readonly actions: IScheduleActions
  ) {
    super('trainhub-schedules', 'jp-trainhub-schedules-panel', 'Training schedules');
  }

  render(): JSX.Element {
    return <SchedulesList api={this.api} actions={this.actions} polled={this.polled} />;
  }
}
