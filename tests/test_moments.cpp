// test_moments.cpp: (being written)
