/**
 * Where the UI tests' screenshots go: the test run's own folder (Playwright's test-results,
 * which each run empties), so that a test run leaves the work tree as it found it. Refreshing
 * docs/*.png is done on purpose, with `bash scripts/refresh-screenshots.sh`, which points
 * TRAINHUB_SCREENSHOTS_DIR at docs/.
 */
import * as path from 'path';

export const SCREENSHOTS =
  process.env.TRAINHUB_SCREENSHOTS_DIR ||
  path.resolve(__dirname, '..', 'test-results', 'screenshots');
