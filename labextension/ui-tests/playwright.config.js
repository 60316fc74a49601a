/**
 * Galata configuration: Debian's Chromium (never a downloaded browser), a real `jupyter lab`
 * started by start-lab.sh, screenshots of the key views saved in the run's test-results/
 * (tests/screenshots.ts; docs/ only through scripts/refresh-screenshots.sh).
 */
const baseConfig = require('@jupyterlab/galata/lib/playwright-config');

module.exports = {
  ...baseConfig,
  testDir: './tests',
  timeout: 240 * 1000,
  expect: { timeout: 60 * 1000 },
  retries: 0,
  workers: 1,
  reporter: [['list']],
  use: {
    ...baseConfig.use,
    baseURL: 'http://localhost:8888',
    viewport: { width: 1400, height: 900 },
    // A failed test's trace keeps the DOM at each step, not a screencast: recording one makes
    // Chromium encode a frame at every paint of every test, kept or not.
    trace: { mode: 'retain-on-failure', screenshots: false },
    video: 'off',
    launchOptions: {
      executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking']
    }
  },
  webServer: {
    command: 'bash ./start-lab.sh',
    url: 'http://localhost:8888/lab',
    timeout: 180 * 1000,
    reuseExistingServer: !process.env.CI
  }
};
