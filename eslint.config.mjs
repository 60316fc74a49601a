// ESLint for the extension's TypeScript (sources, jest and Galata tests): the recommended
// JavaScript and TypeScript rules, with every formatting rule left to Prettier.
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import { defineConfig } from 'eslint/config';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default defineConfig(
  {
    ignores: [
      '**/node_modules/',
      'labextension/lib/',
      'trainhub/labextension/',
      'labextension/ui-tests/test-results/',
      'labextension/ui-tests/playwright-report/'
    ]
  },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    files: ['labextension/**/*.{ts,tsx}'],
    languageOptions: { globals: globals.browser },
    rules: {
      // Interfaces are named IThing, as in JupyterLab.
      '@typescript-eslint/naming-convention': [
        'error',
        { selector: 'interface', format: ['PascalCase'], prefix: ['I'] }
      ],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      eqeqeq: ['error', 'smart'],
      curly: 'error',
      'prefer-const': 'error'
    }
  },
  {
    // Node scripts (configs, benchmarks, the Playwright checks of tests/) are CommonJS.
    files: ['**/*.{js,cjs}'],
    languageOptions: { globals: globals.node, sourceType: 'commonjs' },
    rules: { '@typescript-eslint/no-require-imports': 'off' }
  },
  {
    // Playwright scripts: part of their code runs in the page (page.evaluate).
    files: ['benchmarks/*.js', 'tests/**/*.cjs'],
    languageOptions: { globals: { ...globals.node, ...globals.browser } }
  },
  {
    files: ['**/*.mjs'],
    languageOptions: { globals: globals.node }
  },
  prettier
);
