// test_cli.cpp: (being written)
