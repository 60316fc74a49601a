import { shareButtonLabel, sharingView } from '../sharing';

const job = (user: string, shared: 'private' | 'team', team: string | null = 'nlp') => ({
  user,
  team,
  shared
});

describe('sharingView', () => {
  it('lets the owner share on a hub with teams, and says when it is shared', () => {
    expect(sharingView(job('bo', 'private'), 'bo', ['team_sharing'])).toEqual({
      readOnly: false,
      canShare: true,
      label: null
    });
    expect(sharingView(job('bo', 'team'), 'bo', ['team_sharing']).label).toBe(
      'shared with team nlp'
    );
  });

  it('offers no sharing without teams or without the backend feature', () => {
    expect(sharingView(job('bo', 'private', null), 'bo', ['team_sharing']).canShare).toBe(false);
    expect(sharingView(job('bo', 'private'), 'bo', ['queues']).canShare).toBe(false);
  });

  it("marks a teammate's job read-only with its owner, never shareable", () => {
    expect(sharingView(job('bo', 'team'), 'cy', ['team_sharing'])).toEqual({
      readOnly: true,
      canShare: false,
      label: 'shared by bo · read-only'
    });
  });

  it('treats every job as the viewer own before the viewer is known', () => {
    expect(sharingView(job('bo', 'team'), null, null).readOnly).toBe(false);
  });
});

describe('shareButtonLabel', () => {
  it('says what pressing it does', () => {
    expect(shareButtonLabel(job('bo', 'private'))).toBe('Share with team nlp');
    expect(shareButtonLabel(job('bo', 'team'))).toBe('Make private');
  });
});
