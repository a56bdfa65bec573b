input
