/** Jest for the extension's UI logic (pure modules and plain-DOM widgets, in jsdom). */
const path = require('path');

module.exports = {
  rootDir: path.join(__dirname, 'src'),
  testEnvironment: 'jsdom',
  testMatch: ['**/__tests__/**/*.spec.ts'],
  setupFiles: [path.join(__dirname, 'jest.setup.js')],
  transform: {
    '^.+\\.tsx?$': ['ts-jest', { tsconfig: path.join(__dirname, '..', 'tsconfig.test.json') }]
  },
  // JupyterLab ships ES modules; the pure modules under test import only types from them.
  transformIgnorePatterns: ['/node_modules/'],
  // jsdom picks the `browser` build of yaml, an ES module; its CommonJS build is the same code.
  moduleNameMapper: { '^yaml$': require.resolve('yaml') }
};
