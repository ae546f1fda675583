// test_training.cpp: (being written)
