// test_format.cpp: (being written)
