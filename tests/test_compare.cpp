// test_compare.cpp: (being written)
