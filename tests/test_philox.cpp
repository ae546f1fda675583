// test_philox.cpp: (being written)
