// test_results.cpp: (being written)
