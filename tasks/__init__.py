"""Stage logic of prbench: pure functions over tables and files, testable without Prefect."""
