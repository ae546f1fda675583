// test_lesson.cpp: (being written)
