/** fl.datasets: ready-made datasets. */
export { fashionMNIST, FASHION_MNIST_CLASSES, FASHION_MNIST_DEFAULT_DIR, type FashionMNISTOptions } from './fashion_mnist';
