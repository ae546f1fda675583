// test_dkstd.cpp: (being written)
