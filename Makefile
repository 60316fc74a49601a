.PHONY: start test lint
start:
	bash scripts/start.sh
test:
	bash scripts/test.sh
lint:
	bash scripts/lint.sh
