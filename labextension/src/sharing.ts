/**
 * Whose job the viewer looks at, and what they may do with it (trainhub/jobs/sharing.py):
 * the owner changes, stops and shares it; a teammate it was shared with reads it and may run it
 * again as a job of their own, nothing more (the server refuses the rest with a 403).
 */
import { Feature, IJobSummary } from './models';

export interface ISharingView {
  /** The viewer is not the owner: a teammate's job shared with them. */
  readOnly: boolean;
  /** The viewer may share it or make it private (the owner, on a hub with teams). */
  canShare: boolean;
  /** The words shown with it, e.g. "shared by bo · read-only"; null for a private own job. */
  label: string | null;
}

export function sharingView(
  job: Pick<IJobSummary, 'user' | 'team' | 'shared'>,
  viewer: string | null | undefined,
  features: readonly Feature[] | null | undefined
): ISharingView {
  const shared = job.shared === 'team';
  const readOnly = !!viewer && job.user !== viewer;
  const canShare = !readOnly && !!job.team && !!features?.includes('team_sharing');
  let label: string | null = null;
  if (readOnly) {
    label = `shared by ${job.user} · read-only`;
  } else if (shared) {
    label = `shared with team ${job.team ?? ''}`.trim();
  }
  return { readOnly, canShare, label };
}

/** The button's words for the owner: what pressing it does. */
export function shareButtonLabel(job: Pick<IJobSummary, 'team' | 'shared'>): string {
  return job.shared === 'team' ? 'Make private' : `Share with team ${job.team ?? ''}`.trim();
}
